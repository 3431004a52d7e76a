

def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "network: needs PyPI (downloads ~93 MB); skipped when OVGENAI_C_SKIP_NETWORK=1 or PyPI is unreachable",
    )
