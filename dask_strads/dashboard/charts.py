"""A record column as a line in SVG: cheap enough to redraw every round (plain text, no
plotting library), read by the STRADS page and the live plot in Jupyter."""
import html
import math


def chart(records, name, x="round", width=420, height=120):
    """An SVG figure of ``name`` against ``x`` over ``records`` (log scale when its values are
    positive over a decade or more); "" with fewer than two values."""
    points = [(r[x], r[name]) for r in records
              if isinstance(r.get(name), (int, float)) and math.isfinite(r[name])]
    if len(points) < 2:
        return ""
    values = [v for _, v in points]
    log = min(values) > 0 and max(values) >= 10 * min(values)
    ys = [math.log10(v) for v in values] if log else values
    x0, x1 = points[0][0], points[-1][0]
    low, high = min(ys), max(ys)
    xy = " ".join(f"{5 + (width - 10) * (px - x0) / ((x1 - x0) or 1):.1f},"
                  f"{height - 5 - (height - 10) * (y - low) / ((high - low) or 1):.1f}"
                  for (px, _), y in zip(points, ys))
    label = (f"{name} per {'second' if x == 'time' else x}{' (log scale)' if log else ''}: "
             f"{number(values[0])} → {number(values[-1])}")
    return (f"<figure><svg width='{width}' height='{height}' role='img' "
            f"aria-label='{html.escape(label)}'><polyline fill='none' stroke='#1f77b4' "
            f"stroke-width='1.5' points='{xy}'/></svg><figcaption>{html.escape(label)}"
            f"</figcaption></figure>")


def number(value):
    return "-" if value is None else f"{value:.6g}"
