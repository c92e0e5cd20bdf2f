"""Writes the segmentation-mask benchmark (#14): N PNG masks of SIZE x SIZE,
ADE20K-like (150 classes, 255 as void), half palette (P) and half gray (L),
a few planted bad pixels (class 150..200) in every 10th mask; prints the
planted count. Deterministic for a given seed.

With FORMAT jpg the same masks are written as gray JPEGs (quality 90, as
masks saved with Pillow's JPEG writer are): every edge gains values, so
the count printed is the bad pixels as Pillow decodes them.

    python benches/masks_gen.py OUT_DIR [N] [SIZE] [FORMAT=png]
"""

import os
import sys

import numpy as np
from PIL import Image


def main():
    out = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
    size = int(sys.argv[3]) if len(sys.argv) > 3 else 512
    fmt = sys.argv[4] if len(sys.argv) > 4 else "png"
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(14)
    palette = rng.integers(0, 256, 768, dtype=np.uint8).tolist()
    planted = 0
    for i in range(n):
        # Blocky regions of a few classes, as real masks are (compresses as PNG does).
        small = rng.integers(0, 150, (size // 32, size // 32), dtype=np.uint8)
        small[rng.random(small.shape) < 0.05] = 255
        mask = np.kron(small, np.ones((32, 32), np.uint8))
        if i % 10 == 0:
            for _ in range(3):
                mask[rng.integers(0, size), rng.integers(0, size)] = rng.integers(150, 200)
                planted += 1
        im = Image.fromarray(mask, "L")
        if fmt == "jpg":
            path = os.path.join(out, f"{i:06d}.jpg")
            im.save(path, quality=90)
            a = np.array(Image.open(path))
            bad = int(((a >= 150) & (a != 255)).sum())
            planted += bad - (3 if i % 10 == 0 else 0)  # the decoded count, not the planted one
            continue
        if i % 2:
            im = im.convert("P")
            im.putpalette(palette)
        im.save(os.path.join(out, f"{i:06d}.png"))
    print(planted)


if __name__ == "__main__":
    main()
