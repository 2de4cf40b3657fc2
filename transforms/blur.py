"""PLACEHOLDER: to be implemented."""


def defocus_blur(x, rng, **params):
    raise NotImplementedError('defocus_blur')


def glass_blur(x, rng, **params):
    raise NotImplementedError('glass_blur')


def motion_blur(x, rng, **params):
    raise NotImplementedError('motion_blur')


def zoom_blur(x, rng, **params):
    raise NotImplementedError('zoom_blur')


def gaussian_blur(x, rng, **params):
    raise NotImplementedError('gaussian_blur')
