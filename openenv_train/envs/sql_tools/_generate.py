"""Writes the shop's CSV files deterministically: ``python -m openenv_train.envs.sql_tools._generate``.

The CSVs ship as package data; this script is how they were made, and a test checks that it
still makes exactly them.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import random
from pathlib import Path

__all__ = ["generate", "write"]

SEED = 20240611
FIRST = ["Ada", "Ben", "Chloe", "Dev", "Elena", "Farid", "Grace", "Hiro", "Ines", "Jonas", "Kira", "Liam",
         "Maya", "Nils", "Olga", "Pedro", "Quinn", "Rosa", "Sam", "Tara", "Umar", "Vera", "Wei", "Yara", "Zoe"]
LAST = ["Adams", "Berg", "Costa", "Dubois", "Evans", "Fischer", "Garcia", "Hughes", "Ito", "Jensen", "Kim",
        "Lopez", "Meyer", "Novak", "Okafor", "Patel", "Rossi", "Sato", "Tanaka", "Weber"]
CITIES = {"USA": ["New York", "Chicago", "Austin"], "Canada": ["Toronto", "Vancouver"], "UK": ["London", "Leeds"],
          "Germany": ["Berlin", "Munich"], "France": ["Paris", "Lyon"], "Japan": ["Tokyo", "Osaka"]}
CATALOG = {
    "Electronics": (["Headphones", "Charger", "Speaker", "Keyboard", "Webcam"], 15.0, 250.0),
    "Books": (["Novel", "Cookbook", "Atlas", "Biography", "Poetry Collection"], 8.0, 45.0),
    "Kitchen": (["Kettle", "Skillet", "Knife Set", "Blender", "Teapot"], 12.0, 180.0),
    "Toys": (["Puzzle", "Kite", "Robot Kit", "Board Game", "Yo-yo"], 5.0, 90.0),
    "Garden": (["Hose", "Trowel", "Planter", "Pruner", "Bird Feeder"], 7.0, 120.0),
    "Sports": (["Yoga Mat", "Tennis Racket", "Water Bottle", "Jump Rope", "Football"], 6.0, 160.0),
}
ADJECTIVES = ["Classic", "Compact", "Deluxe", "Eco", "Pro", "Smart", "Travel", "Vintage"]
STATUSES = (["delivered"] * 12) + (["shipped"] * 3) + (["pending"] * 2) + (["cancelled"] * 3)
N_CUSTOMERS, N_ORDERS, N_REVIEWS = 60, 150, 80

Table = tuple[list[str], list[list[object]]]


def _day(rng: random.Random, start: str, end: str) -> dt.date:
    first, last = dt.date.fromisoformat(start), dt.date.fromisoformat(end)
    return first + dt.timedelta(days=rng.randrange((last - first).days + 1))


def _customers(rng: random.Random) -> Table:
    names = rng.sample([f"{f} {s}" for f in FIRST for s in LAST], N_CUSTOMERS)
    rows: list[list[object]] = []
    for i, name in enumerate(names, 1):
        country = rng.choice(sorted(CITIES))
        email = name.lower().replace(" ", ".") + "@example.com"
        rows.append([i, name, email, rng.choice(CITIES[country]), country, _day(rng, "2022-01-01", "2023-12-31")])
    return ["customer_id", "name", "email", "city", "country", "signup_date"], rows


def _products(rng: random.Random) -> Table:
    rows: list[list[object]] = []
    for category, (nouns, low, high) in CATALOG.items():
        for noun in nouns:
            price = round(rng.uniform(low, high), 2)
            stock = 0 if rng.random() < 0.1 else rng.randint(1, 200)
            rows.append([len(rows) + 1, f"{rng.choice(ADJECTIVES)} {noun}", category, price, stock])
    return ["product_id", "name", "category", "price", "stock"], rows


def _orders(rng: random.Random, buyers: list[int]) -> Table:
    rows: list[list[object]] = []
    for i in range(1, N_ORDERS + 1):
        day, status = _day(rng, "2023-01-01", "2024-12-31"), rng.choice(STATUSES)
        shipped = day + dt.timedelta(days=rng.randint(1, 7)) if status in ("delivered", "shipped") else ""
        rows.append([i, rng.choice(buyers), day, status, shipped])
    return ["order_id", "customer_id", "order_date", "status", "shipped_date"], rows


def _order_items(rng: random.Random, prices: dict[int, float]) -> Table:
    rows: list[list[object]] = []
    for order_id in range(1, N_ORDERS + 1):
        for product_id in sorted(rng.sample(sorted(prices), rng.randint(1, 4))):
            discount = 0.9 if rng.random() < 0.2 else 1.0
            rows.append([order_id, product_id, rng.randint(1, 5), round(prices[product_id] * discount, 2)])
    return ["order_id", "product_id", "quantity", "unit_price"], rows


def _reviews(rng: random.Random, products: int, customers: int) -> Table:
    pairs = rng.sample([(p, c) for p in range(1, products + 1) for c in range(1, customers + 1)], N_REVIEWS)
    rows: list[list[object]] = []
    for i, (product_id, customer_id) in enumerate(sorted(pairs), 1):
        rating = rng.choices([1, 2, 3, 4, 5], weights=[1, 1, 2, 4, 4])[0]
        rows.append([i, product_id, customer_id, rating, _day(rng, "2023-01-15", "2025-01-31")])
    return ["review_id", "product_id", "customer_id", "rating", "review_date"], rows


def generate() -> dict[str, str]:
    """Every table's CSV text, by table name; the same on every call."""
    rng = random.Random(SEED)
    customers = _customers(rng)
    products = _products(rng)
    buyers = sorted(rng.sample(range(1, N_CUSTOMERS + 1), N_CUSTOMERS - 8))  # eight customers never order
    prices = {int(str(row[0])): float(str(row[3])) for row in products[1]}
    tables = {
        "customers": customers,
        "products": products,
        "orders": _orders(rng, buyers),
        "order_items": _order_items(rng, prices),
        "reviews": _reviews(rng, len(products[1]), N_CUSTOMERS),
    }
    texts = {}
    for name, (header, rows) in tables.items():
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)
        texts[name] = out.getvalue()
    return texts


def write(folder: Path) -> None:
    """Write ``<table>.csv`` files into ``folder``."""
    for name, text in generate().items():
        (folder / f"{name}.csv").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    write(Path(__file__).with_name("data"))
