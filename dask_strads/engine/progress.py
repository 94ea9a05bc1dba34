"""A progress bar over the rounds of a fit (tqdm)."""


class ProgressBar:
    def __init__(self, max_rounds, name):
        try:
            from tqdm.auto import tqdm
        except ImportError as error:
            raise ImportError("progress=True needs tqdm: pip install tqdm") from error
        self._bar = tqdm(total=max_rounds, unit="round", desc=name)

    def update(self, report):
        self._bar.update(1)
        self._bar.set_postfix({k: v for k, v in report.items() if k in ("objective", "gap")},
                              refresh=False)

    def close(self, converged):
        if converged:  # a converged fit is complete, not stopped short of max_rounds
            self._bar.total = self._bar.n
            self._bar.refresh()
        self._bar.close()
