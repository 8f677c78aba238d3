"""The model zoo: many validation targets, run as items on a local pool, as shards or on Ray.

`graphmend validate --all` reads the manifest (C++: `[tool.graphmend] validate` or a zoo TOML file),
writes it as JSON and hands it to `python -m graphmend_validator zoo run`. Each item (target x mode x
need) is one `graphmend validate` run in a fresh process; its record is written atomically to the
results folder when it ends, so a killed run resumes where it stopped. `zoo merge` joins result
folders (shards) into one report; `--baseline` gates on a committed CSV.

Standard library only; Ray is imported by ray_engine.py alone, when `--ray` asks for it.
"""
