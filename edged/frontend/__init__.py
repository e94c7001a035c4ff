"""Text frontend: normalization, sentences, phonemes."""
