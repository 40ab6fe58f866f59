"""The host a run ran on, whole: what every manifest records of it (facts), and what a low-latency host is
recommended to have, with the command that would set each (check). Never changes the host."""
