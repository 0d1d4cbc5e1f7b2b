-- The shop database of the sql_tools env. Rows come from the CSV files beside this script.
CREATE TABLE customers (
    customer_id INTEGER PRIMARY KEY,
    name        TEXT NOT NULL,
    email       TEXT NOT NULL UNIQUE,
    city        TEXT NOT NULL,
    country     TEXT NOT NULL,
    signup_date TEXT NOT NULL            -- ISO date, YYYY-MM-DD
);

CREATE TABLE products (
    product_id INTEGER PRIMARY KEY,
    name       TEXT NOT NULL UNIQUE,
    category   TEXT NOT NULL,
    price      REAL NOT NULL,           -- list price in USD
    stock      INTEGER NOT NULL         -- units in the warehouse
);

CREATE TABLE orders (
    order_id     INTEGER PRIMARY KEY,
    customer_id  INTEGER NOT NULL REFERENCES customers (customer_id),
    order_date   TEXT NOT NULL,         -- ISO date
    status       TEXT NOT NULL,         -- delivered, shipped, pending or cancelled
    shipped_date TEXT                   -- ISO date; NULL while pending and for cancelled orders
);

CREATE TABLE order_items (
    order_id   INTEGER NOT NULL REFERENCES orders (order_id),
    product_id INTEGER NOT NULL REFERENCES products (product_id),
    quantity   INTEGER NOT NULL,
    unit_price REAL NOT NULL,           -- price paid per unit (list price, or 10% off)
    PRIMARY KEY (order_id, product_id)
);

CREATE TABLE reviews (
    review_id   INTEGER PRIMARY KEY,
    product_id  INTEGER NOT NULL REFERENCES products (product_id),
    customer_id INTEGER NOT NULL REFERENCES customers (customer_id),
    rating      INTEGER NOT NULL,       -- 1 to 5 stars
    review_date TEXT NOT NULL           -- ISO date
);
