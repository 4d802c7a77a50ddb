"""The presets' names without their table: what `--preset` offers, importable before torch and transformers.

`presets.PRESETS` holds a pair under each of these names and checks, as it loads, that its keys are these, so
the command line can offer the choices and refuse a typo without importing the models' code.
"""

PRESET_NAMES = ("shakespeare", "smollm2-local", "smollm2", "qwen2.5", "gpt2", "pythia")
