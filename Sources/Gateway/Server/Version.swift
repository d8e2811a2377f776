/// daogate's version, as the OpenAPI description and `--version` say it.
public let daogateVersion = "0.1.0"
