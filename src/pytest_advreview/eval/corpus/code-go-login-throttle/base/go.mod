module example.com/portal

go 1.22
