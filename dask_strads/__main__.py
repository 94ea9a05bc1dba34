"""``python -m dask_strads``: the ``dask-strads`` command."""
from .cli import main

raise SystemExit(main())
