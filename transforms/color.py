"""PLACEHOLDER: to be implemented."""


def brightness(x, rng, **params):
    raise NotImplementedError('brightness')


def saturate(x, rng, **params):
    raise NotImplementedError('saturate')
