"""Build the API reference (HTML) of dask_strads from its numpydoc docstrings, with pdoc,
offline: ``python docs/build_api.py [OUTPUT_DIR]`` (default ``docs/api``)."""
import pathlib
import sys

import pdoc
import pdoc.render

import dask_strads


def build(output_dir):
    # The package imports its public names on first use; pdoc documents what the module
    # holds, so they are all imported first.
    for name in dask_strads.__all__:
        vars(dask_strads)[name] = getattr(dask_strads, name)
    pdoc.render.configure(docformat="numpy", footer_text=f"dask_strads {dask_strads.__version__}")
    pdoc.pdoc("dask_strads", output_directory=pathlib.Path(output_dir))
    return pathlib.Path(output_dir) / "dask_strads.html"


if __name__ == "__main__":
    print(build(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent / "api"))
