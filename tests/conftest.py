"""The harness (tests/harness/) is the tests' plugin: its fixtures are everywhere."""

pytest_plugins = ("tests.harness.fixtures",)
