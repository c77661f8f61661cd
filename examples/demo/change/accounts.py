"""Account updates."""


def update_email(db, account_id, email):
    db.execute("UPDATE accounts SET email = ? WHERE id = ?", (email, account_id))


def update_display_name(db, account_id, name):
    db.execute("UPDATE accounts SET display_name = ? WHERE id = ?", (name, account_id))
