#!/usr/bin/env python3
"""A random AutoReg genotype whose predicted forward time is close to another's: the
standard sanity check for an architecture search (Li & Talwalkar, UAI 2019) compares the
searched network with random ones of the same cost.

  bench/random_genotype.py --op-cost DIR/op_cost.json --like DIR/genotype.txt [--seed 0]
                           [--tolerance 0.1] > random.txt

Each edge draws one of the 8 operations uniformly; draws are repeated until the
genotype's predicted time (the costs' overhead + its operations' times) is within
--tolerance of the reference genotype's. Prints the genotype file and, on stderr, both
predicted times.
"""
import argparse
import json
import random
import sys

EDGES = ["F0", "F1", "F2", "F3", "F4", "F5", "D4_0", "D4_1", "D4_2", "D2_0", "D2_1", "D2_2"]
OPS = ["conv_1x1", "conv_3x3", "conv_5x5", "sep_conv_3x3", "sep_conv_5x5", "dil_conv_3x3", "dil_conv_5x5",
       "dil_conv_7x7"]


def read_genotype(path):
    names = []
    for line in open(path):
        names += line.split("#")[0].replace(",", " ").split()
    if len(names) != 12 or any(n not in OPS for n in names):
        sys.exit(f"random_genotype: {path} is not a genotype file")
    return names


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--op-cost", required=True)
    ap.add_argument("--like", required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tolerance", type=float, default=0.1)
    args = ap.parse_args()
    costs = json.load(open(args.op_cost))
    ms = lambda g: costs["overhead_ms"] + sum(costs["ms"][e][op] for e, op in zip(EDGES, g))
    target = ms(read_genotype(args.like))
    rng = random.Random(args.seed)
    for tries in range(1, 10_000_001):
        g = [rng.choice(OPS) for _ in EDGES]
        if abs(ms(g) - target) <= args.tolerance * target:
            break
    else:
        sys.exit("random_genotype: no random genotype within the tolerance")
    print(f"random genotype {ms(g):.1f} ms predicted against {target:.1f} ms ({tries} draws)", file=sys.stderr)
    print(f"# a random genotype (seed {args.seed}) of about the predicted forward time of {args.like}")
    for e, op in zip(EDGES, g):
        print(f"{op:14}# {e}")


if __name__ == "__main__":
    main()
