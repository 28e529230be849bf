"""The API's routes: the edge where requests are read and answers written, one module per
group of endpoints; the work they hand on lives in the packages by concern."""
