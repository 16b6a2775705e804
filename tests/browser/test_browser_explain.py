"""The explain panel in a real browser (headless Chromium through Playwright), offline."""

from __future__ import annotations

import pytest
from test_browser_report import browser, visit  # noqa: F401 - the fixtures
from test_explain import explained_site

pytestmark = pytest.mark.usefixtures("chromium")


def test_a_change_point_opens_its_explain_panel_with_the_operators_and_both_traces(repo, visit):  # noqa: F811
    site, _ = explained_site(repo)
    v = visit(site / "index.html")
    link = v.page.locator("a.explain-link")
    assert link.count() == 1
    link.click()
    v.page.wait_for_load_state("load")
    assert "/explain/" in v.page.url
    v.assert_clean(site)
    ops = v.page.locator("table.ops tbody tr")
    names = [ops.nth(k).get_attribute("data-op") for k in range(ops.count())]
    # Both sides' operators are listed (their order by contribution is timing, and the op diff's
    # unit test checks it: on a busy machine a small op's time can outgrow exp's).
    assert "aten::exp" in names and ("aten::_softmax" in names or "aten::softmax" in names)
    exp = v.page.locator('table.ops tr[data-op="aten::exp"] td.op-status')
    assert exp.inner_text() == "gone"
    body = v.page.inner_text("body")
    assert "use <torch.softmax> & friends" in body  # shown as text
    for side in ("base", "head"):
        href = v.page.locator(f"a.trace-{side}").get_attribute("href")
        assert (site / "explain" / href).is_file()
