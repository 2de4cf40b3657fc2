"""PLACEHOLDER: to be implemented."""


def gaussian_noise(x, rng, **params):
    raise NotImplementedError('gaussian_noise')


def shot_noise(x, rng, **params):
    raise NotImplementedError('shot_noise')


def impulse_noise(x, rng, **params):
    raise NotImplementedError('impulse_noise')


def speckle_noise(x, rng, **params):
    raise NotImplementedError('speckle_noise')
