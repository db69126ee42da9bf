from hypothesis import given, strategies as st

from turnback.store.objects.digest import Hasher, is_digest, new_seed


def test_digest_shape_and_seed():
    a, b = Hasher(1), Hasher(2)
    d = a.digest(b"hello")
    assert is_digest(d) and d == d.lower() and len(d) == 32
    assert d != b.digest(b"hello")
    assert d == Hasher(1).digest(b"hello")


def test_new_seed_is_64_bit():
    seeds = {new_seed() for _ in range(20)}
    assert len(seeds) > 1 and all(0 <= s < 1 << 64 for s in seeds)
    Hasher(max(seeds))


@given(st.lists(st.binary(max_size=200), max_size=8), st.integers(0, 2**64 - 1))
def test_stream_equals_one_shot(chunks, seed):
    h = Hasher(seed)
    s = h.stream()
    for c in chunks:
        s.update(c)
    assert s.hexdigest() == h.digest(b"".join(chunks))
