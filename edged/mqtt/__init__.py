"""The broker side: one paho client with its topics and rules, and announcement audio out."""

from .client_setup import Topics, read_secret, set_credentials
from .intake import POOL_SHARE, LinkHandler, Origin, Ticket
from .link import MqttLink
from .sink import AudioSink

__all__ = ["POOL_SHARE", "AudioSink", "LinkHandler", "MqttLink", "Origin", "Ticket", "Topics", "read_secret",
           "set_credentials"]
