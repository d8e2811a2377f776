print("daogate")
