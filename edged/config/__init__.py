"""The config file: schema (frozen dataclasses), loader, and the rules between fields."""

from .fields import PATH_KINDS, SPEED_RANGE, ConfigError, check_topic_part, default_request_bytes
from .house import parse_hhmm
from .loader import load_config, parse_config
from .mqtt import MqttConfig, TlsConfig
from .schema import (
    AudioConfig,
    CacheConfig,
    ChimesConfig,
    Config,
    FrontendConfig,
    LanguagesConfig,
    LimitsConfig,
    QuietHours,
    ScheduleConfig,
    VoiceConfig,
    VolumeRange,
)
from .servers import HomeAssistantConfig, HttpConfig, WyomingConfig

__all__ = [
    "PATH_KINDS", "SPEED_RANGE", "AudioConfig", "CacheConfig", "ChimesConfig", "Config", "ConfigError",
    "FrontendConfig", "HomeAssistantConfig", "HttpConfig", "LanguagesConfig", "LimitsConfig",
    "MqttConfig", "QuietHours", "ScheduleConfig", "TlsConfig", "VoiceConfig", "VolumeRange",
    "WyomingConfig", "check_topic_part", "default_request_bytes", "load_config", "parse_config",
    "parse_hhmm",
]
