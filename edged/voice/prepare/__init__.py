"""Preparing a Piper voice, offline, in a child process (`python -m edged.voice.prepare`): the
graph split into encoder, flow and decoder (`split.py`), quantized, tuned for this CPU
(`tune.py`, `rewrite.py`), its windows measured (`probe.py`), written with a manifest
(`prepare.py`). The only code that needs the `onnx` package; the daemon reads the result with
`voice/piper/prepared.py`."""
