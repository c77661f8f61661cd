import os

WEBHOOK_SECRET = os.environ["PAY_WEBHOOK_SECRET"].encode()
WEBHOOK_SECRET_NEXT = os.environ.get("PAY_WEBHOOK_SECRET_NEXT", "").encode()
