"""The one exception of the voice room."""


class VoiceError(Exception):
    """A voice cannot be loaded or used; the message names the file or voice and what is wrong."""
