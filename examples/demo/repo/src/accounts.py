"""Account updates."""


def update_email(db, account_id, email):
    db.execute("UPDATE accounts SET email = ? WHERE id = ?", (email, account_id))
