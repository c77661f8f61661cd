from reports.export import customers_csv


def test_header_and_rows():
    text = customers_csv([{"email": "a@x.io", "name": "Ann", "city": "Gent", "orders": 2,
                           "total_spent": "41.90"}])
    assert text.splitlines() == ["email,name,city,orders,total_spent", "a@x.io,Ann,Gent,2,41.90"]
