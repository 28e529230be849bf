"""Every setting, declared once: CLI flag, environment variable and default come from here.

A field `foo_bar` is the flag `--foo-bar` and the variable `QWEN3_ASR_FOO_BAR`. A field may
name one more variable in `json_schema_extra={"env": ...}` (for names users already know,
such as `QWEN_API_KEY`), and its `--help` placeholder in `"metavar"` (`"default_text"` where
an unset field means a default worked out later). The settings come in groups, one module and
class each (the front doors' too: `realtime`, `wyoming`), mixed into `composite.Settings` and
listed in its `GROUPS`, the order of `--help` and of the configuration reference. A module
takes the groups it reads, not `Settings`, so that the core imports no front door's group;
this package's own import imports none of them either. The command line is read in `serving.cli`,
where flags this declaration does not know are kept, in order, for vLLM.
"""
