"""Tests of the problem library: loader, importer, audit, the built-in suite and its commands."""
