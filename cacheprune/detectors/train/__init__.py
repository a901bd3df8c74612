"""Training data and training for the learned PII detector (`cacheprune.detectors.learned`).

    python -m cacheprune.detectors.train generate --split train --count 12000 --seed 0 --out F
    python -m cacheprune.detectors.train fit --seed 0 --data F --out DIR

Needs Faker (the `eval` extra) to generate; running the shipped model needs only spaCy.
"""
