"""edged's benchmarks: run each from the checkout as a module, `python -m bench.<name>`
(README.md lists them). They start brokers, daemons and MQTT clients with the tests' harness
(tests.harness), and write bench/results/<name>.json."""
