"""`python -m edged.voice.prepare ONNX FOLDER SHA256`: what `ensure_prepared` runs."""

from .prepare import main

raise SystemExit(main())
