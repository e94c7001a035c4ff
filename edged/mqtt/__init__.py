"""The broker side: one paho client with its topics and rules, and announcement audio out."""

from .client_setup import Topics, read_secret, set_credentials
from .link import LinkHandler, MqttLink, Ticket
from .sink import AudioSink

__all__ = ["AudioSink", "LinkHandler", "MqttLink", "Ticket", "Topics", "read_secret",
           "set_credentials"]
