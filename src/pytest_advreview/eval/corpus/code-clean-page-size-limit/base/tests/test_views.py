from orders_api import views


def fake_rows(n):
    return [{"id": f"o{i}"} for i in range(n)]


def test_next_cursor_when_more_rows(monkeypatch):
    monkeypatch.setattr(views, "fetch_orders", lambda user_id, before, limit: fake_rows(limit))
    result = views.list_orders(1, {"limit": "2"})
    assert [o["id"] for o in result["orders"]] == ["o0", "o1"]
    assert result["next"] == "o1"


def test_no_cursor_on_last_page(monkeypatch):
    monkeypatch.setattr(views, "fetch_orders", lambda user_id, before, limit: fake_rows(1))
    assert views.list_orders(1, {"limit": "2"})["next"] is None
