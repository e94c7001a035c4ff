"""The broker side: one paho client with its topics and rules, and announcement audio out."""

from .link import LinkHandler, MqttLink, Ticket, Topics, set_credentials
from .sink import AudioSink

__all__ = ["AudioSink", "LinkHandler", "MqttLink", "Ticket", "Topics", "set_credentials"]
