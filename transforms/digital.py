"""PLACEHOLDER: to be implemented."""


def contrast(x, rng, **params):
    raise NotImplementedError('contrast')


def elastic_transform(x, rng, **params):
    raise NotImplementedError('elastic_transform')


def pixelate(x, rng, **params):
    raise NotImplementedError('pixelate')


def jpeg_compression(x, rng, **params):
    raise NotImplementedError('jpeg_compression')
