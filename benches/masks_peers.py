"""The scripts users write to check masks, for the benchmark: each mask
read, its out-of-range pixels counted with numpy, over a multiprocessing
pool. Prints the number of bad pixels.

    python benches/masks_peers.py pil|cv2 MASK_DIR THREADS NUM_CLASSES
"""

import os
import sys
from multiprocessing import Pool

import numpy as np


def bad_pil(path):
    from PIL import Image

    a = np.array(Image.open(path))
    counts = np.bincount(a.ravel(), minlength=256)
    return int(counts[NUM_CLASSES:255].sum() + counts[256:].sum())


def bad_cv2(path):
    import cv2

    a = cv2.imread(path, cv2.IMREAD_UNCHANGED)
    values, counts = np.unique(a, return_counts=True)
    bad = (values >= NUM_CLASSES) & (values != 255)
    return int(counts[bad].sum())


def main():
    global NUM_CLASSES
    which, folder, threads, NUM_CLASSES = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    files = sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith((".png", ".jpg")))
    fn = bad_pil if which == "pil" else bad_cv2
    with Pool(threads) as pool:
        print(sum(pool.map(fn, files, chunksize=64)))


NUM_CLASSES = 150
if __name__ == "__main__":
    main()
