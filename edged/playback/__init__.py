"""Local playback: the player thread, PortAudio devices, chimes, loudness and resampling."""

from .devices import OutputDevice, PlayerError, list_devices, resolve_device
from .player import Player
from .session import PlaybackReport

__all__ = ["OutputDevice", "PlaybackReport", "Player", "PlayerError", "list_devices",
           "resolve_device"]
