"""Accessibility checks with axe-core (vendored under tests/data/axe) in the headless Chromium of tests/browser.py.

`axe_violations(driver)` runs axe on the page the driver shows and returns its serious and critical
violations, each reduced to what a failing assertion needs to be read: the rule, its impact, the help text and
the first offending elements. WebDriver evaluates the script through DevTools, outside the page's
Content-Security-Policy, so our pages need not allow inline script for the check.
"""

from __future__ import annotations

from pathlib import Path

AXE_JS = Path(__file__).parent / "data" / "axe" / "axe.min.js"
BLOCKING = ("serious", "critical")

_RUN = """
const done = arguments[arguments.length - 1];
const context = arguments[0] ? {include: [[arguments[0]]]} : document;
axe.run(context, {resultTypes: ['violations']})
  .then(result => done(result.violations.map(v => ({
      id: v.id, impact: v.impact, help: v.help,
      nodes: v.nodes.slice(0, 3).map(n => n.target.join(' '))}))))
  .catch(error => done({error: String(error)}));
"""


def axe_violations(driver, *, impacts: tuple[str, ...] | None = BLOCKING, within: str | None = None) -> list[dict]:
    """Violations of the given impacts (None: every impact), over the whole page or the elements `within` selects."""
    if not driver.execute_script("return typeof window.axe !== 'undefined'"):
        driver.execute_script(AXE_JS.read_text())
    driver.set_script_timeout(60)
    if within and not driver.execute_script("return document.querySelector(arguments[0]) !== null", within):
        raise AssertionError(f"{within!r} is not on {driver.current_url}: axe would check nothing")
    result = driver.execute_async_script(_RUN, within)
    if isinstance(result, dict) and "error" in result:
        raise RuntimeError(f"axe failed on {driver.current_url}: {result['error']}")
    return [v for v in result if impacts is None or v["impact"] in impacts]
