"""edged's tests: a package, so that the tests and bench/ import one harness (tests.harness)."""
