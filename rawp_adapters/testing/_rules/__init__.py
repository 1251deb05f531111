"""The conformance rules' checks, by tier (:mod:`.must`, :mod:`.capability`,
:mod:`.advisory`); :mod:`rawp_adapters.testing._catalogue` names and orders them."""
