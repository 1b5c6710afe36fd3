"""The real exporter's tests: run by scripts/test_exir.sh in the venv that
scripts/setup.sh exir makes (torch 2.13.0, executorch 1.5)."""
