"""A seed pages print."""

SEED = 1234567


def main() -> None:
    assert SEED > 0


if __name__ == "__main__":
    main()
