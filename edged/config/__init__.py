"""The config file: schema (frozen dataclasses), loader, and the rules between fields."""

from .loader import load_config, parse_config
from .schema import (
    PATH_KINDS,
    AudioConfig,
    CacheConfig,
    ChimesConfig,
    Config,
    ConfigError,
    FrontendConfig,
    HomeAssistantConfig,
    HttpConfig,
    LanguagesConfig,
    LimitsConfig,
    MqttConfig,
    QuietHours,
    ScheduleConfig,
    TlsConfig,
    VoiceConfig,
    VolumeRange,
    WyomingConfig,
    check_topic_part,
    default_request_bytes,
    parse_hhmm,
)

__all__ = [
    "PATH_KINDS", "AudioConfig", "CacheConfig", "ChimesConfig", "Config", "ConfigError",
    "FrontendConfig", "HomeAssistantConfig", "HttpConfig", "LanguagesConfig", "LimitsConfig",
    "MqttConfig", "QuietHours", "ScheduleConfig", "TlsConfig", "VoiceConfig", "VolumeRange",
    "WyomingConfig", "check_topic_part", "default_request_bytes", "load_config", "parse_config",
    "parse_hhmm",
]
