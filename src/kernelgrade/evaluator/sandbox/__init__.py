"""How the judge starts a child and what walls it puts around it.

launcher.py is the seam (ChildSpec in, a running process out; the plain subprocess launcher); bwrap.py and
unshare.py wrap the same spec in namespaces, isolation.py and cgroups.py add the uid, limits and groups,
gpu_nodes.py picks the device nodes a child may see, child_roots.py the host paths it may see,
sandbox_init.py is the last step before the child runs,
and levels.py chooses among them by name. child_env.py is the environment a child starts with and
child_process.py the judge's handle on one that runs. Nothing here knows what a child is for.
"""
