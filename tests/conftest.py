pytest_plugins = ["pytester", "tests.filesystems"]
