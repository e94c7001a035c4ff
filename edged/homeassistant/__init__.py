"""Home Assistant over MQTT: the device config it discovers, and the daemon's side of it."""

from .bridge import HomeAssistantBridge
from .discovery import Discovery, build_discovery, node_id, settings_topics

__all__ = ["Discovery", "HomeAssistantBridge", "build_discovery", "node_id", "settings_topics"]
