"""The MQTT side: the intake (thread to loop, acknowledgements, retry and park), taking over orphaned events,
publishing verdicts, intake health, remote-config pushes."""
