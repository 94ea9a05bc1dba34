"""The STRADS pages of the scheduler's web server: ``/strads`` (HTML, refreshed every few
seconds, no script needed) and ``/strads/fits.json``."""
import html
import json

from distributed.http.utils import RequestHandler

from .charts import chart, number
from .store import store_of

#: Seconds between refreshes of the HTML page.
REFRESH_SECONDS = 3


class FitsJSON(RequestHandler):
    def get(self):
        self.set_header("Content-Type", "application/json")
        self.write(json.dumps({"fits": store_of(self.server).summary()}, default=_number))


class FitsPage(RequestHandler):
    def get(self):
        self.set_header("Content-Type", "text/html; charset=utf-8")
        self.write(render(store_of(self.server).summary()))


#: For the ``distributed.scheduler.http.routes`` configuration (see :mod:`dask_strads.dashboard`).
routes = [(r"strads", FitsPage, {}), (r"strads/fits.json", FitsJSON, {})]


def render(fits):
    """The HTML page of ``fits`` (as :meth:`FitStore.summary` gives them)."""
    body = "".join(_fit_html(fit) for fit in fits) or "<p>No fit has run on this cluster yet.</p>"
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'>"
            f"<meta http-equiv='refresh' content='{REFRESH_SECONDS}'>"
            f"<title>STRADS fits</title><style>{_STYLE}</style></head><body>"
            f"<h1>STRADS fits</h1><p>{len(fits)} fit(s) on this cluster, newest first; "
            f"JSON: <a href='strads/fits.json'>strads/fits.json</a>. Dask's own pages: "
            f"<a href='status'>status</a>.</p>{body}</body></html>")


def _fit_html(fit):
    e = html.escape
    facts = {"state": fit["state"], **_progress(fit),
             "wall time": f"{fit['wall_seconds']:.3g} s",
             "objective": number(fit["objective"]), "gap": number(fit["gap"])}
    if fit.get("plane_messages") is not None:  # the newest round's, worker to worker
        facts["messages"] = (f"{fit['plane_messages']} in the last round, "
                             f"{fit['plane_bytes'] / 1e6:.3g} MB between processes")
    head = "".join(f"<span class='fact'><b>{e(k)}</b> {e(str(v))}</span>"
                   for k, v in facts.items())
    workers = "".join(
        f"<tr><td>{e(w)}</td><td>{len(s['blocks'])}</td><td>{e(_blocks(s['blocks']))}</td>"
        f"<td>{s['tasks']}</td>"
        f"<td>{s['compute_seconds']:.3g}</td><td>{s['waiting_seconds']:.3g}</td></tr>"
        for w, s in fit["workers"].items())
    recoveries = "".join(
        f"<li>after round {r.get('round')}: lost {e(', '.join(r.get('lost', [])))}; "
        f"{r.get('blocks_moved')} block(s) moved, {r.get('seconds', 0):.3g} s</li>"
        for r in fit["recoveries"]) or "<li>none</li>"
    return (f"<section class='fit' id='fit-{e(fit['id'])}'>"
            f"<h2>{e(str(fit['estimator']))} <small>({e(str(fit['program']))}, fit "
            f"{e(fit['id'])})</small></h2><p>{head}</p>"
            f"{chart(fit['records'], 'objective')}{chart(fit['records'], 'gap')}"
            f"<table><tr><th>worker</th><th>blocks</th><th>block ids</th><th>tasks</th>"
            f"<th>compute s</th>"
            f"<th>waiting s</th></tr>{workers}</table>"
            f"<p>Recoveries:</p><ul>{recoveries}</ul></section>")


def _progress(fit):
    """The rounds run out of the most the fit may run, and its iterations where an iteration
    is several rounds (LDA, matrix factorization): ``{label: text}``."""
    rounds, most = fit["rounds"], fit.get("max_rounds")
    if not most:
        return {"rounds": str(rounds)}
    share = f" ({100 * rounds / most:.0f}%)"
    shown = {"rounds": f"{rounds} of {most}{share}"}
    per_iteration = fit.get("rounds_per_iteration") or 1
    if per_iteration > 1:
        shown["iterations"] = f"{rounds // per_iteration} of {most // per_iteration}{share}"
    if fit.get("after_stop"):
        shown["after the stop"] = (f"{fit['after_stop']} round(s) already running finished; "
                                   "not shown")
    return shown


def _blocks(blocks):
    return ", ".join(map(str, blocks)) or "-"


def _number(value):
    return float(value)


_STYLE = ("body{font-family:sans-serif;margin:1em 2em}section.fit{border-top:1px solid #ccc;"
          "padding:.5em 0}.fact{margin-right:1.5em}table{border-collapse:collapse}"
          "td,th{border:1px solid #ddd;padding:2px 8px;text-align:left}"
          "figure{display:inline-block;margin:0 1em 0 0}svg{background:#fafafa}")
