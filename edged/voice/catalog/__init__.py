"""What voices exist: the catalog of voices edged can fetch and verify (`known.py`), finding an
installed one by name (`find.py`), fetching one (`pull.py`), every voice this install can
speak described once (`listing.py`), and file hashes remembered beside the files (`hashes.py`)."""

from .find import VoiceInfo, find_voice, list_voices

__all__ = ["VoiceInfo", "find_voice", "list_voices"]
