"""PLACEHOLDER: to be implemented."""


def snow(x, rng, **params):
    raise NotImplementedError('snow')


def frost(x, rng, **params):
    raise NotImplementedError('frost')


def fog(x, rng, **params):
    raise NotImplementedError('fog')


def spatter(x, rng, **params):
    raise NotImplementedError('spatter')
