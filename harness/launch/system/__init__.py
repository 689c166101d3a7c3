"""What every launcher stands on: child processes and their deadlines, fork servers, network namespaces, the machine lock, CPU use, the XLA cache and the platform's facts."""
