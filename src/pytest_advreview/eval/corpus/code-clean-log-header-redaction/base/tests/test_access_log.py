import json
import logging
import time

from gateway.access_log import log_request


def test_one_json_line_per_request(caplog):
    caplog.set_level(logging.INFO, logger="gateway.access")
    log_request("GET", "/v1/items", 200, {"Accept": "application/json"}, time.monotonic())
    line = json.loads(caplog.records[0].getMessage())
    assert line["status"] == 200
    assert line["headers"] == {"Accept": "application/json"}
