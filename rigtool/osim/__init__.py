"""OpenSim models as the subject of a session: reading a .osim file into rigtool's tree of
links (rigtool.osim.model_file, rigtool.osim.links) and writing it back with the measured
mass properties (rigtool.osim.personalise)."""
